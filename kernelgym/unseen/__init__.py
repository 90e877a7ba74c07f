"""Unseen-configuration evaluation: a public generator, a private store, and replay of a final kernel.

Protocol (AgentKernelArena, arXiv:2605.16819): per task, 8 configs the agent never saw, in six categories;
the original and the optimized kernel run on the same configs; the task lands in one of four quadrants;
the headline metric is conditional correctness = P(optimized correct | original correct).
"""
from kernelgym.unseen.evaluate import QUADRANTS, evaluate_unseen, quadrant
from kernelgym.unseen.generator import CATEGORIES, generate_unseen_configs, interpreter_gaps
from kernelgym.unseen.store import private_dir, unseen_configs

__all__ = ["CATEGORIES", "QUADRANTS", "evaluate_unseen", "generate_unseen_configs", "interpreter_gaps", "private_dir",
           "quadrant", "unseen_configs"]
