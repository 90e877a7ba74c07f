#!/usr/bin/env bash
# GRPO with verl 0.9.x on kernelgym tasks through KernelGymAgentLoop (kernelgym.integrations.verl).
# Needs a GPU machine with verl[vllm] (or [sglang]) installed; not run in CI (CI checks agent_loops.yaml only).
#   python examples/verl_agent_loop/make_dataset.py --out $HOME/data/kernelgym
#   MODEL=Qwen/Qwen3-8B bash examples/verl_agent_loop/train.sh
set -euo pipefail
DATA=${DATA:-$HOME/data/kernelgym}
MODEL=${MODEL:-Qwen/Qwen3-8B}
python -m verl.trainer.main_ppo \
  algorithm.adv_estimator=grpo \
  data.train_files="$DATA/train.parquet" data.val_files="$DATA/test.parquet" \
  data.train_batch_size=8 data.max_prompt_length=16384 data.max_response_length=32768 \
  data.return_raw_chat=True \
  actor_rollout_ref.model.path="$MODEL" \
  actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.mode=async actor_rollout_ref.rollout.n=4 \
  actor_rollout_ref.rollout.prompt_length=16384 actor_rollout_ref.rollout.response_length=32768 \
  actor_rollout_ref.rollout.multi_turn.format=hermes \
  actor_rollout_ref.rollout.multi_turn.max_assistant_turns=20 \
  actor_rollout_ref.rollout.agent.agent_loop_config_path=examples/verl_agent_loop/agent_loops.yaml \
  actor_rollout_ref.rollout.agent.default_agent_loop=kernelgym_agent \
  +kernelgym.max_steps=20 +kernelgym.run_dir=kernelgym-runs/verl \
  trainer.n_gpus_per_node=8 trainer.nnodes=1 trainer.total_epochs=1 "$@"
