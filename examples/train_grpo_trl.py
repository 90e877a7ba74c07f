"""GRPO with TRL on kernelgym tasks: the env's actions are the model's tools, the arena score its reward.

    python examples/train_grpo_trl.py                                   # tiny random model on the CPU (a smoke run)
    python examples/train_grpo_trl.py --model Qwen/Qwen3-0.6B --max-steps 50 --max-completion-length 4096 \\
        --tasks triton-rmsnorm,triton-softmax                          # a real model, on a GPU

Needs ``pip install 'kernelgym[trl]'``. Each rollout is one kernelgym episode (`KernelArenaTRLEnv`): TRL calls
``reset(**row)`` with a dataset row naming the task and seed, runs the tool calls the model makes, and takes
``get_reward()``, the arena score of the kernel at the episode's end (an episode the model leaves without submit is
graded as it stands). The default model is a 2-layer Qwen2 with random weights and a BPE tokenizer trained on the
task prompts, so the run needs no download: it shows the plumbing, not learning (it calls no tool, and scores the
untouched baseline). A real model needs a chat template TRL can parse tool calls from (Qwen2.5/3, Llama 3.1/3.2,
...; `trl.chat_template_utils.supports_tool_calling`).

Without a GPU the env runs on Triton's CPU interpreter: nothing is timed, the best score is 120 (compile +20,
correct +100); on a GPU the score adds 100 x speedup.
"""
from __future__ import annotations

import argparse
import functools
import os
from importlib import resources

from kernelgym.integrations.trl import KernelArenaTRLEnv

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>", "<tool_response>",
                  "</tool_response>", "<think>", "</think>"]


def tiny_model_and_tokenizer(corpus: list[str]):
    """A 2-layer Qwen2 (hidden 32, random weights) and a byte-level BPE tokenizer trained on `corpus`, with TRL's
    Qwen2.5 chat template, whose tool calls TRL parses. Built here: nothing is downloaded."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=3000, special_tokens=SPECIAL_TOKENS,
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    template = resources.files("trl").joinpath("chat_templates/qwen2_5.jinja").read_text()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                        chat_template=template)
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(Qwen2Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                                         num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                                         max_position_embeddings=8192, tie_word_embeddings=True,
                                         pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id))
    return model, tokenizer


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=None, help="HF model id or path; default: a tiny random model built here")
    ap.add_argument("--tasks", default="triton-rmsnorm", help="comma-separated task names or env ids")
    ap.add_argument("--seeds", type=int, default=4, help="dataset rows per task (seeds 0..N-1)")
    ap.add_argument("--max-steps", type=int, default=2, help="optimizer steps")
    ap.add_argument("--num-generations", type=int, default=2, help="rollouts per prompt (GRPO's group size)")
    ap.add_argument("--batch-size", type=int, default=2, help="per-device train batch size (rollouts)")
    ap.add_argument("--max-completion-length", type=int, default=None,
                    help="tokens per rollout, tool results included (default 8 for the tiny model, 2048 otherwise)")
    ap.add_argument("--max-tool-calls", type=int, default=10, help="tool-calling rounds per rollout")
    ap.add_argument("--env-max-steps", type=int, default=20, help="env steps (tool calls) per episode")
    ap.add_argument("--learning-rate", type=float, default=1e-6)
    ap.add_argument("--run-dir", default="kernelgym-runs/grpo", help="where the episodes' workspaces live")
    ap.add_argument("--output-dir", default="kernelgym-runs/grpo-out", help="the trainer's output directory")
    args = ap.parse_args()

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    factory = functools.partial(KernelArenaTRLEnv, run_dir=args.run_dir, max_steps=args.env_max_steps)
    if args.model is None:
        probe = factory()
        corpus = [probe.reset(task=t, seed=0) for t in tasks]
        probe.close()
        model, tokenizer = tiny_model_and_tokenizer(corpus)
        completion_tokens = args.max_completion_length or 8
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(args.model)
        model = AutoModelForCausalLM.from_pretrained(args.model, dtype="auto")
        completion_tokens = args.max_completion_length or 2048
    gpu = torch.cuda.is_available()
    rows = [{"prompt": [{"role": "user", "content": "Optimize this GPU kernel, then submit."}], "task": t, "seed": s}
            for t in tasks for s in range(args.seeds)]
    config = GRPOConfig(output_dir=args.output_dir, per_device_train_batch_size=args.batch_size,
                        num_generations=args.num_generations, max_completion_length=completion_tokens,
                        max_steps=args.max_steps, learning_rate=args.learning_rate, logging_steps=1,
                        save_strategy="no", report_to="none", use_cpu=not gpu, bf16=gpu,
                        max_tool_calling_iterations=args.max_tool_calls, seed=0)
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, args=config, train_dataset=Dataset.from_list(rows),
                          environment_factory=factory)
    trainer.train()
    for entry in trainer.state.log_history:
        if "reward" in entry:
            print(f"step {entry['step']}: reward {entry['reward']:.1f} "
                  f"(kernelgym {entry.get('rewards/KernelArenaTRLEnv/mean', float('nan')):.1f}), "
                  f"tool calls per rollout {entry.get('tools/call_frequency', 0):.2f}")
    for env in trainer._environment_pool[None]:  # the trainer keeps its pool; close the sandboxes now
        env.close()


if __name__ == "__main__":
    main()
