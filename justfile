# memcached-gitops tasks. `just --list` shows them.
venv := ".venv"
py := venv + "/bin/python"

# Create the virtualenv: the locked test install (requirements/test.txt), then the lint and lock tools.
setup:
    python3 -m venv {{venv}} && {{venv}}/bin/pip install -q --require-hashes -r requirements/test.txt
    {{venv}}/bin/pip install -q -e '.[dev]'

# Run the whole test suite (what CI runs).
test: setup
    {{py}} -m pytest

# The whole suite on the newest releases pyproject.toml allows: a fresh venv, no lock, no pip cache.
test-latest:
    rm -rf .venv-latest && python3 -m venv .venv-latest
    .venv-latest/bin/pip install -q --no-cache-dir '.[test]'
    .venv-latest/bin/python -m pytest

# Refresh the locks CI installs from (requirements/*.txt) after pyproject.toml's dependencies change:
# pins that still fit are kept. `just lock --upgrade` takes the newest releases the ranges allow.
lock *args: setup
    {{venv}}/bin/uv pip compile pyproject.toml --extra test --generate-hashes --universal --custom-compile-command "just lock" -o requirements/test.txt {{args}}
    {{venv}}/bin/uv pip compile requirements/oldest-pyyaml.in --generate-hashes --universal --custom-compile-command "just lock" -o requirements/oldest-pyyaml.txt {{args}}
    {{venv}}/bin/uv pip compile pyproject.toml requirements/build.in --generate-hashes --universal --custom-compile-command "just lock" -o requirements/runtime.txt {{args}}
    {{venv}}/bin/uv pip compile pyproject.toml requirements/build.in --extra cluster --extra kustomize --generate-hashes --universal --custom-compile-command "just lock" -o requirements/image.txt {{args}}

# Rewrite the generated reference pages (docs/reference/generated/) after the CLI, the CRD, the metrics,
# the annotations or the RBAC changed (tests/repository/test_generated_docs.py fails until then).
reference: setup
    {{py}} docs/generate_reference.py

# Serve the documentation site locally (MkDocs with Material, installed on first use).
docs: setup
    {{venv}}/bin/pip install -q mkdocs-material
    {{venv}}/bin/mkdocs serve

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
    UPDATE_GOLDEN=1 {{py}} -m pytest tests/render/test_render.py -k golden

# Rewrite schemas/memcached-crd.json (the CRD as data, loaded at start-up) after editing the CRD.
crd-data: setup
    {{py}} -c "from memcached_gitops.schemas.crd import builtin_crd_data; open('schemas/memcached-crd.json', 'w').write(builtin_crd_data())"

# Mutation testing (mutmut, niced, not in CI) of one group in mutation/groups.toml: render, schemas, drift, status.
mutate group: setup
    {{venv}}/bin/pip install -q -e '.[dev,mutation]'
    {{py}} mutation/run.py {{group}}
