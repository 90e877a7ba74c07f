"""The built-in hardware profiles: ``<id>.yaml`` and its ``<id>.md``. Data, not code: this file makes the folder the
package ``kernelgym.hardware_profiles`` (pyproject.toml maps it; ``kernelgym.hardware`` is the module that reads
the profiles) so that `kernelgym.resources` finds it in every install."""
