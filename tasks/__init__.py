"""The built-in tasks, one folder each: ``<language>/<name>/``. Data, not code: this file makes the folder the
package ``kernelgym.tasks`` (pyproject.toml maps it) so that `kernelgym.resources` finds it in every install."""
