# Make `.new-tree/`: the files the GPU scripts need, from one commit (default HEAD), so that a device call measures
# that commit and not work in progress in the checkout (the device copies the working tree). Run here, then call
# the device with `carry: [".whl", ".deb", ".new-tree"]` (add ".baseline-tree" for an A/B) and a command such as:
#     cp -r .whl .deb .new-tree/ && { [ -d .baseline-tree ] && mv .baseline-tree .new-tree/; } ; cd .new-tree &&
#         COMMIT=<hash> bash benchmarks/gpu_calls.sh "gpu_issue24.sh session9"
# Usage: bash benchmarks/gpu_tree.sh [COMMIT]
set -eu
commit=${1:-HEAD}
rm -rf .new-tree && mkdir .new-tree
# The task suite reads tests/test_task_suite.py (its known-faster table) and the kernels under tests/ and benchmarks/.
git archive "$commit" kernelgym tasks policies hardware benchmarks examples pyproject.toml tests/kernels \
    tests/test_task_suite.py | tar -x -C .new-tree
rm -rf .new-tree/benchmarks/results
echo "$(git rev-parse --short "$commit"): $(du -sh .new-tree | cut -f1) in .new-tree/"
