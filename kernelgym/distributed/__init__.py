"""Rollouts on Ray (optional: ``pip install 'kernelgym[ray]'``); docs/DISTRIBUTED.md.

- `make_ray_vec` / `RayVectorEnv` (vector_env.py): a Gymnasium vector env, one Ray actor per env.
- `make_remote_env` / `RemoteEnv` (remote_env.py): one env in a Ray actor behind the plain `gym.Env` API, for the
  trainer adapters (kernelgym.integrations).
- `EnvHandle` (handle.py): a dead actor's episode replayed, or reported as an infra fault.
- `run_on_ray` (backend.py): ``kernelgym run --backend ray``.
- placement.py: connecting to Ray and the resources each actor asks for.

Importing this package does not import Ray; each entry point does, and raises `RayUnavailableError` without it.
"""
from kernelgym.distributed.handle import EnvHandle, EnvLostError
from kernelgym.distributed.placement import ActorStartTimeout, RayUnavailableError, connect
from kernelgym.distributed.remote_env import RemoteEnv, make_remote_env
from kernelgym.distributed.vector_env import RayVectorEnv, make_ray_vec

__all__ = ["ActorStartTimeout", "EnvHandle", "EnvLostError", "RayUnavailableError", "RayVectorEnv", "RemoteEnv", "connect",
           "make_ray_vec", "make_remote_env"]
