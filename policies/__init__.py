"""The built-in policies, one folder each: ``<name>/policy.py`` + ``config.yaml``. This file makes the folder the
package ``kernelgym.policies`` (pyproject.toml maps it) so that `kernelgym.resources` finds it in every install."""
