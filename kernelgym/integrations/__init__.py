"""Adapters that hand kernelgym tasks to RL trainers; each is a thin layer over the one env (`KernelArenaEnv`).

- `kernelgym.integrations.trl`: `KernelArenaTRLEnv` for TRL's ``GRPOTrainer(environment_factory=...)``; needs no
  import of TRL itself (``pip install 'kernelgym[trl]'`` for the trainer).
- `kernelgym.integrations.skyrl`: `KernelArenaSkyRLEnv`, a ``skyrl_gym`` ``BaseTextEnv`` (``pip install
  'kernelgym[skyrl]'``; importing that module without skyrl-gym raises an ImportError naming the extra).

This package imports neither trainer: importing kernelgym never needs them.
"""
