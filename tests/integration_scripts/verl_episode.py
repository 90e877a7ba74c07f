"""Runs kernelgym's verl agent loop for one triton-rmsnorm episode against a scripted server manager; prints JSON.

Run with the verl venv's python (.venv-verl, made by .ci/setup): tests/test_integration_verl.py does.
The tokenizer is built here (bytes as tokens, a small chat template), so nothing is downloaded.
"""
import asyncio
import json
import sys

from omegaconf import OmegaConf
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast
from verl.experimental.agent_loop.agent_loop import DictConfigWrap, _agent_loop_registry
from verl.workers.rollout.replica import TokenOutput

from kernelgym.integrations.verl import KernelGymAgentLoop

TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
            "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def tokenizer():
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {c: i for i, c in enumerate(sorted(alphabet))}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<|pad|>", eos_token="<|im_end|>")
    fast.add_special_tokens({"additional_special_tokens": ["<|im_start|>"]})
    fast.chat_template = TEMPLATE
    return fast


class ScriptedServer:
    """Stands in for verl's server manager: each generate() returns the next scripted reply's token ids."""

    def __init__(self, tok, replies):
        self.tok, self.replies, self.prompts = tok, list(replies), []

    async def generate(self, *, request_id, prompt_ids, sampling_params, **kwargs):
        self.prompts.append(list(prompt_ids))
        return TokenOutput(token_ids=self.tok.encode(self.replies.pop(0) + "<|im_end|>", add_special_tokens=False))


def call(name, **arguments):
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


async def main(run_dir):
    tok = tokenizer()
    replies = ["Let me look.", call("read_file", path="kernel.py"),
               call("edit_file", path="kernel.py", old="BLOCK_SIZE = 1024", new="BLOCK_SIZE = 2048"),
               call("submit")]
    server = ScriptedServer(tok, replies)
    config = OmegaConf.create({"actor_rollout_ref": {"rollout": {
        "prompt_length": 16384, "response_length": 65536, "multi_turn": {"format": "hermes"}}},
        "kernelgym": {"run_dir": run_dir, "max_steps": 8}})
    loop = KernelGymAgentLoop(trainer_config=DictConfigWrap(config), server_manager=server, tokenizer=tok,
                              processor=None, dataset_cls=None, data_config=DictConfigWrap(OmegaConf.create({})))
    out = await loop.run({"temperature": 1.0}, raw_prompt=[], extra_info={"task": "triton-rmsnorm"})
    ids, mask = out.prompt_ids + out.response_ids, out.response_mask
    generated = [tok.decode([t for t, m in zip(out.response_ids, mask) if m])]
    observed = tok.decode([t for t, m in zip(out.response_ids, mask) if not m])
    print(json.dumps({
        "registered": _agent_loop_registry.get("kernelgym_agent"), "reward": out.reward_score,
        "num_turns": out.num_turns, "extra": out.extra_fields["kernelgym"], "stages": out.extra_fields.get("stages"),
        "len_response": len(out.response_ids), "len_mask": len(mask), "generated": generated[0],
        "observed": observed, "prompt": tok.decode(out.prompt_ids),
        # each generate call saw exactly the tokens so far (token-in/token-out, no re-tokenising)
        "prefix_ok": all(ids[:len(p)] == p for p in server.prompts), "calls": len(server.prompts)}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
