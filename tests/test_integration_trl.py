"""TRL's real GRPOTrainer trains on a kernelgym task through `KernelArenaTRLEnv` (environment_factory), on the CPU
interpreter, with the tiny Qwen2 model and BPE tokenizer examples/train_grpo_trl.py builds (no downloads)."""
from __future__ import annotations

import functools
import math
import os

import pytest

pytest.importorskip("trl")

from kernelgym.integrations.trl import KernelArenaTRLEnv  # noqa: E402


def tiny_model_and_tokenizer(corpus: list[str]):
    """The example's tiny Qwen2 and BPE tokenizer (examples/train_grpo_trl.py), built from `corpus`: one builder for
    both, so the test trains what the example trains."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "examples" / "train_grpo_trl.py"
    spec = importlib.util.spec_from_file_location("train_grpo_trl_example", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    return example.tiny_model_and_tokenizer(corpus)


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
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer
    from trl.chat_template_utils import supports_tool_calling

    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    factory = functools.partial(RecordingEnv, run_dir=tmp_path / "runs", max_steps=4)
    probe = factory()
    corpus = [probe.reset(task="triton-rmsnorm", seed=0)]
    probe.close()
    model, tokenizer = tiny_model_and_tokenizer(corpus)
    assert supports_tool_calling(tokenizer)
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
