"""Wrappers for KernelArena envs."""
from kernelgym.wrappers.trajectory import TRAJECTORY_FORMAT, TrajectoryRecorder
from kernelgym.wrappers.unseen import UnseenConfigEval

__all__ = ["TrajectoryRecorder", "TRAJECTORY_FORMAT", "UnseenConfigEval"]
