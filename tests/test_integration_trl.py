"""TRL's real GRPOTrainer trains on a kernelgym task through `KernelArenaTRLEnv` (environment_factory), on the CPU
interpreter, with a tiny Qwen2 model and a BPE tokenizer both built here (no downloads)."""
from __future__ import annotations

import functools
import math
import os

import pytest

pytest.importorskip("trl")

from kernelgym.integrations.trl import KernelArenaTRLEnv  # noqa: E402


def tiny_tokenizer(corpus: list[str]):
    """A byte-level BPE tokenizer trained on `corpus`, with TRL's Qwen2.5 chat template (which TRL knows how to
    parse tool calls of) and the special tokens that template uses."""
    from importlib import resources

    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>", "<tool_response>",
               "</tool_response>", "<think>", "</think>"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=3000, special_tokens=special,
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    template = resources.files("trl").joinpath("chat_templates/qwen2_5.jinja").read_text()
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   chat_template=template)


class RecordingEnv(KernelArenaTRLEnv):
    """The adapter, recording every reward it hands the trainer (instances are pooled, so on the class)."""

    rewards: list[float] = []

    def get_reward(self) -> float:
        reward = super().get_reward()
        type(self).rewards.append(reward)
        return reward


def test_grpo_trainer_logs_the_env_rewards(tmp_path):
    """Two optimizer steps of GRPO on triton-rmsnorm: each rollout's reward is the arena score of a submit at
    episode end (the tiny random model calls no tool well, so the kernel is the untouched baseline: 120), and the
    trainer's logged reward means are those scores."""
    import torch
    from datasets import Dataset
    from transformers import Qwen2Config, Qwen2ForCausalLM
    from trl import GRPOConfig, GRPOTrainer
    from trl.chat_template_utils import supports_tool_calling

    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    factory = functools.partial(RecordingEnv, run_dir=tmp_path / "runs", max_steps=4)
    probe = factory()
    corpus = [probe.reset(task="triton-rmsnorm", seed=0)]
    probe.close()
    tokenizer = tiny_tokenizer(corpus)
    assert supports_tool_calling(tokenizer)

    torch.manual_seed(0)
    model = Qwen2ForCausalLM(Qwen2Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                                         num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                                         max_position_embeddings=8192, tie_word_embeddings=True,
                                         pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id))
    rows = [{"prompt": [{"role": "user", "content": "Make the kernel faster."}], "task": "triton-rmsnorm", "seed": i}
            for i in range(4)]
    args = GRPOConfig(output_dir=str(tmp_path / "out"), per_device_train_batch_size=2, num_generations=2,
                      max_completion_length=8, max_steps=2, learning_rate=1e-3, logging_steps=1, save_strategy="no",
                      report_to="none", use_cpu=True, bf16=False, max_tool_calling_iterations=2, seed=0)
    RecordingEnv.rewards = []
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, args=args, train_dataset=Dataset.from_list(rows),
                          environment_factory=factory)
    trainer.train()

    assert trainer.state.global_step == 2
    logged = [h for h in trainer.state.log_history if "rewards/RecordingEnv/mean" in h]
    assert len(logged) == 2
    assert RecordingEnv.rewards == [120.0] * 4  # 2 steps x 2 rollouts, each graded: the baseline compiles and is correct
    for h in logged:
        assert math.isclose(h["rewards/RecordingEnv/mean"], 120.0)
        assert math.isclose(h["reward"], 120.0)
    for env in trainer._environment_pool[None]:
        assert env.metrics["correct"] and env.metrics["compiled"] and env.grade["score"] == 120.0
        env.close()
        assert env.env is None
