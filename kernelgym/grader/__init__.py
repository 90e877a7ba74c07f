"""The trusted grader: compile -> correctness -> performance -> arena score."""
from kernelgym.grader.grader import Grade, Grader, GraderConfig
from kernelgym.grader.score import arena_score

__all__ = ["Grade", "Grader", "GraderConfig", "arena_score"]
