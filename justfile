# memcached-gitops tasks. `just --list` shows them.
venv := ".venv"
py := venv + "/bin/python"

# Create the virtualenv with the test and lint tools.
setup:
    python3 -m venv {{venv}} && {{venv}}/bin/pip install -q -e '.[dev]'

# Run the whole test suite (what CI runs).
test: setup
    {{py}} -m pytest

# Lint with ruff.
lint: setup
    {{venv}}/bin/ruff check .

# Print the benchmark figures (cold start, 10,000 CRs rendered/validated, peak memory).
bench: setup
    {{py}} bench/render_validate.py

# Render the shipped examples to stdout.
render-examples: setup
    {{venv}}/bin/memcached-gitops render examples/

# Regenerate the golden files after an intended change to the rendered output.
update-golden: setup
    UPDATE_GOLDEN=1 {{py}} -m pytest tests/test_render.py -k golden

# Rewrite schemas/memcached-crd.json (the CRD as data, loaded at start-up) after editing the CRD.
crd-data: setup
    {{py}} -c "from memcached_gitops.schemas.crd import builtin_crd_data; open('schemas/memcached-crd.json', 'w').write(builtin_crd_data())"

# Mutation testing (mutmut, niced, not in CI) of one group in mutation/groups.toml: render, schemas, drift, status.
mutate group: setup
    {{venv}}/bin/pip install -q -e '.[dev,mutation]'
    {{py}} mutation/run.py {{group}}
