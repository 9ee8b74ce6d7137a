"""The differential test's own rules, checked without a cluster: what counts as a disagreement.

tests/real_cluster/test_validator_real_apiserver.py and bench/validator_differential.py compare the validator
with kubectl through ``compare``; a refusal listed in ``DELIBERATE_DIFFERENCES`` must never be
reported as one, and nothing else may hide behind it.
"""

from __future__ import annotations

from memcached_gitops.schemas import Validator

from tests.differential import DELIBERATE_DIFFERENCES, Verdict, compare, deliberate_difference, our_verdict, parse_kubectl

CR = "apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: m}\nspec:\n  size: {size}\n"
#: kubectl reads ``size: !foo 2`` as the string "2"; the server's answer to that body (transcript 38's last create).
SERVER_ON_A_STRING = parse_kubectl(  # kube-apiserver v1.36.2 with the shipped CRD (which has CEL rules)
    1, "", 'The Memcached "m" is invalid: \n* spec.size: Invalid value: "string": spec.size in body must be of type '
    'integer: "string"\n* <nil>: Invalid value: null: some validation rules were not checked because the object was '
    'invalid; correct the existing errors to complete validation\n')


def test_a_tag_outside_the_core_schema_is_a_deliberate_difference(builtin_validator: Validator) -> None:
    text = CR.replace("{size}", "!foo 2")
    ours = our_verdict(text, builtin_validator)
    assert not ours.accepted and 'unknown tag "!foo": only the YAML core tags are allowed' in ours.text
    assert deliberate_difference(ours.text) == DELIBERATE_DIFFERENCES["only the YAML core tags are allowed"]
    assert SERVER_ON_A_STRING.fields == {"spec.size"}
    assert compare(text, ours, SERVER_ON_A_STRING) is None, "the server names a field ours does not"
    assert compare(text, ours, Verdict(True)) is None, "kubectl would accept a string where a string is declared"


def test_other_answers_are_still_compared(builtin_validator: Validator) -> None:
    text = CR.replace("{size}", "'2'")
    ours = our_verdict(text, builtin_validator)
    assert deliberate_difference(ours.text) is None
    assert compare(text, ours, SERVER_ON_A_STRING) is None, "the same refusal, the same field"
    found = compare(text, ours, Verdict(True))
    assert found is not None and found.kind == "verdict"
    assert compare(text, Verdict(True), SERVER_ON_A_STRING).kind == "verdict"


def test_a_cause_at_a_list_index_or_a_map_key_is_read_with_its_index() -> None:
    """kube-apiserver v1.36.2's words for a null toleration (the differential's seed 33 drew it)."""
    text = ('The Memcached "cache-1" is invalid: \n* spec.tolerations[0]: Invalid value: "null": spec.tolerations[0] in body must '
            'be of type object: "null"\n* spec.resources.limits[memory]: Invalid value: a\n* <nil>: Invalid value: null: some '
            'validation rules were not checked because the object was invalid; correct the existing errors to complete validation\n')
    assert parse_kubectl(1, "", text).fields == {"spec.tolerations[0]", "spec.resources.limits[memory]"}


def test_an_integer_formats_cause_is_read_at_the_field_its_words_end_with() -> None:
    """kube-apiserver v1.36.2 on a weight of 3000000000 (the differential's seed 34 drew it)."""
    text = ('The Memcached "m" is invalid: \n* <nil>: Invalid value: "": Checked value must be of type integer with format int32 '
            'in spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight\n'
            '* spec.nodeSelector: Invalid value: "array": spec.nodeSelector in body must be of type object: "array"\n')
    assert parse_kubectl(1, "", text).fields == {
        "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight", "spec.nodeSelector"}
    single = ('The Memcached "a" is invalid: <nil>: Invalid value: "": Checked value must be of type integer with format int32 in '
              'spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight\n')
    assert parse_kubectl(1, "", single).fields == {
        "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight"}
