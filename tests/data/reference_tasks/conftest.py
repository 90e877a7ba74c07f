# The task folders here are data for tests/test_reference_tasks.py: their pytest files are the tasks' own commands,
# run by kernelgym's grader in a copy of one folder (where this file is not), never by the suite. A path given on
# pytest's command line is still collected (collect_ignore skips only what pytest finds by walking).
collect_ignore_glob = ["*"]
