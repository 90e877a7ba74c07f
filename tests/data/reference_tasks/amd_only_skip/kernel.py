"""A stand-in kernel file; the task is marked skip and never runs."""
print("not run")
