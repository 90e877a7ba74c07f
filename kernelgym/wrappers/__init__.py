"""Wrappers for KernelArena envs."""
from kernelgym.wrappers.trajectory import TRAJECTORY_FORMAT, TrajectoryRecorder

__all__ = ["TrajectoryRecorder", "TRAJECTORY_FORMAT"]
