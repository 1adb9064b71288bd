"""CRD handling of the sandbox API server, rule by rule against apiextensions-apiserver.

Upstream files each table follows (kubernetes v1.36):
* structural checks: staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/schema/validation.go
* pruning: .../pkg/apiserver/schema/pruning/algorithm.go; nulls: .../schema/defaulting/prunenulls.go
* defaulting: .../pkg/apiserver/schema/defaulting/algorithm.go
* causes: .../pkg/apiserver/validation/validation.go (kube-openapi wording wrapped in field errors)
* rules: .../pkg/apiserver/schema/cel/validation.go (transition rules only on update)
* tables: .../pkg/registry/customresource/tableconvertor/tableconvertor.go
"""

from __future__ import annotations

import copy
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from sidecar.sandbox.crd import CustomResource, human_duration
from sidecar.sandbox.schema import RULES_NOT_CHECKED

ROOT = Path(__file__).resolve().parents[2]
CRDS = sorted((ROOT / "manifests" / "crd").glob("*_*.yaml"))
GUIDE_RUN = ROOT / "sidecar" / "data" / "guide-ascend-dryrun.yaml"


def _load(name: str) -> CustomResource:
    return CustomResource(yaml.safe_load((ROOT / "manifests" / "crd" / name).read_text()))


RR = _load("repack.volcano.sh_repackruns.yaml")


def _run(**spec: Any) -> dict[str, Any]:
    obj = yaml.safe_load(GUIDE_RUN.read_text())
    obj["spec"].update(spec)
    return dict(obj)


@pytest.mark.parametrize("path", CRDS, ids=lambda p: p.name)
def test_every_manifest_loads(path: Path) -> None:
    cr = CustomResource(yaml.safe_load(path.read_text()))
    assert cr.plural and cr.kind and cr.version and cr.list_kind == f"{cr.kind}List"


def test_repackrun_names_follow_the_guide() -> None:
    """ "RepackRun is a cluster-level resource"; runs are never edited, so status is a subresource."""
    assert (RR.group, RR.version, RR.kind, RR.plural, RR.singular) == (
        "repack.volcano.sh",
        "v1alpha1",
        "RepackRun",
        "repackruns",
        "repackrun",
    )
    assert not RR.namespaced and RR.has_status and "rr" in RR.short_names


def test_volcano_crds_match_upstream_names() -> None:
    pg, job = _load("scheduling.volcano.sh_podgroups.yaml"), _load("batch.volcano.sh_jobs.yaml")
    assert (pg.group, pg.version, pg.short_names, pg.namespaced, pg.has_status) == (
        "scheduling.volcano.sh",
        "v1beta1",
        ["pg", "podgroup-v1beta1"],
        True,
        False,
    )
    assert (job.group, job.version, job.short_names, job.has_status) == (
        "batch.volcano.sh",
        "v1alpha1",
        ["vcjob", "vj"],
        True,
    )


def test_guide_run_validates_clean_and_gets_the_guide_weights() -> None:
    obj = RR.default(_run())
    assert RR.validate(obj, None) == []
    assert obj["spec"]["planner"] == {
        "affectedWorkloadsWeight": 1.0,
        "belowMinAvailableWeight": 0.8,
        "affectedResourcesWeight": 0.6,
        "movedResourcesWeight": 0.3,
        "movedPodsWeight": 0.1,
    }


@pytest.mark.parametrize(
    ("spec", "reason", "field", "message"),
    [
        (
            {"mode": "Foo"},
            "FieldValueNotSupported",
            "spec.mode",
            'Unsupported value: "Foo": supported values: "DryRun", "Execute"',
        ),
        (
            {"ttlSecondsAfterFinished": "1d"},
            "FieldValueTypeInvalid",
            "spec.ttlSecondsAfterFinished",
            'Invalid value: "string": spec.ttlSecondsAfterFinished in body must be of type integer: "string"',
        ),
        (
            {"maxPerRun": {"podGroups": -1}},
            "FieldValueInvalid",
            "spec.maxPerRun.podGroups",
            "Invalid value: -1: spec.maxPerRun.podGroups in body should be greater than or equal to 0",
        ),
        (
            {"maxPerRun": {"resources": {"huawei.com/ascend-1980": -1}}},
            "FieldValueInvalid",
            "spec.maxPerRun.resources.huawei.com/ascend-1980",
            "Invalid value: -1: spec.maxPerRun.resources.huawei.com/ascend-1980 in body"
            " should be greater than or equal to 0",
        ),
        (
            {"goals": []},
            "FieldValueInvalid",
            "spec.goals",
            "Invalid value: 0: spec.goals in body should have at least 1 items",
        ),
        (
            {"goals": [{"resource": "a"}, {"resource": "b"}]},
            "FieldValueTooMany",
            "spec.goals",
            "Too many: 2: must have at most 1 item",
        ),
        (
            {"goals": [{"minFragImprovementPercent": 5}]},
            "FieldValueRequired",
            "spec.goals[0].resource",
            "Required value",
        ),
        (
            {"goals": [{"resource": "a", "minFragImprovementPercent": 101}]},
            "FieldValueInvalid",
            "spec.goals[0].minFragImprovementPercent",
            "Invalid value: 101: spec.goals[0].minFragImprovementPercent in body should be less than or equal to 100",
        ),
        (
            {"goals": [{"resource": ""}]},
            "FieldValueInvalid",
            "spec.goals[0].resource",
            'Invalid value: "": spec.goals[0].resource in body should be at least 1 chars long',
        ),
        (
            {"goals": [{"resource": "example.com/" + "x" * 310}]},
            "FieldValueTooLong",
            "spec.goals[0].resource",
            "Too long: may not be more than 317 bytes",
        ),
        (
            {"scope": {"nodes": {"include": {"selector": {"matchExpressions": [{"key": "a", "operator": "Gt"}]}}}}},
            "FieldValueNotSupported",
            "spec.scope.nodes.include.selector.matchExpressions[0].operator",
            'Unsupported value: "Gt": supported values: "In", "NotIn", "Exists", "DoesNotExist"',
        ),
        (
            {"eviction": {"gracePeriodSeconds": True}},
            "FieldValueTypeInvalid",
            "spec.eviction.gracePeriodSeconds",
            'Invalid value: "boolean": spec.eviction.gracePeriodSeconds in body must be of type integer: "boolean"',
        ),
        (
            {"maxPerRun": {"podGroups": 2**31}},
            "FieldValueInvalid",
            "spec.maxPerRun.podGroups",
            "Invalid value: 2147483648: spec.maxPerRun.podGroups in body must be of type int32: 2147483648",
        ),
    ],
)
def test_each_bad_field_gives_its_cause(spec: dict[str, Any], reason: str, field: str, message: str) -> None:
    causes = RR.validate(RR.default(_run(**spec)), None)
    assert {"reason": reason, "field": field, "message": message} in causes, causes


def test_missing_spec_fields_are_required() -> None:
    obj = _run()
    del obj["spec"]["mode"]
    assert RR.validate(RR.default(obj), None) == [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.mode"},
        RULES_NOT_CHECKED,
    ]
    del obj["spec"]
    assert RR.validate(RR.default(obj), None)[0]["field"] == "spec"


def test_unknown_fields_are_pruned_where_not_preserved() -> None:
    obj = _run(extra=1)
    obj["spec"]["goals"][0]["typo"] = True
    obj["status"] = {"phase": "Succeeded", "plan": {"anything": {"goes": 1}}, "relocations": [{"x": 1}], "free": 2}
    out = RR.default(obj)
    assert "extra" not in out["spec"] and "typo" not in out["spec"]["goals"][0]
    assert out["status"]["plan"] == {"anything": {"goes": 1}} and out["status"]["free"] == 2
    assert out["status"]["relocations"] == [{"x": 1}]
    assert obj["spec"]["extra"] == 1, "default() returns a new object"


def test_spec_is_immutable_on_update_only() -> None:
    """``self == oldSelf`` is a transition rule: skipped on create, enforced on update."""
    old = RR.default(_run())
    assert RR.validate(old, None) == []
    new = copy.deepcopy(old)
    new["spec"]["mode"] = "Execute"
    assert RR.validate(new, old) == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "object": spec is immutable; create a new RepackRun instead',
            "field": "spec",
        }
    ]
    labelled = copy.deepcopy(old)
    labelled["metadata"]["labels"] = {"change-ticket": "x"}
    labelled["status"] = {"phase": "Running"}
    assert RR.validate(labelled, old) == []


def _crd(schema: dict[str, Any], **version: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [
                {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}, **version}
            ],
        },
    }


def _obj_schema(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"spec": {"type": "object", "properties": props}}}


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        ({"properties": {}}, "openAPIV3Schema.type"),
        (_obj_schema(x={"properties": {}}), "properties[x].type"),
        (_obj_schema(x={"type": "array"}), "properties[x].items"),
        (
            _obj_schema(x={"type": "object", "properties": {}, "additionalProperties": {"type": "string"}}),
            "additionalProperties",
        ),
        (_obj_schema(x={"type": "string", "$ref": "#/x"}), "properties[x].$ref"),
        (_obj_schema(x={"type": "string", "x-kubernetes-validations": [{"rule": "self.lowerAscii() == ''"}]}), ".rule"),
        (_obj_schema(x={"type": "string", "x-kubernetes-validations": [{"rule": "self.size() > 1"}]}), ".rule"),
        (_obj_schema(x={"type": "integer", "x-kubernetes-validations": [{"rule": "self + 1 > 2"}]}), ".rule"),
        (_obj_schema(x={"type": "integer", "x-kubernetes-validations": [{"rule": "k == 1"}]}), ".rule"),
        (
            _obj_schema(
                x={
                    "type": "array",
                    "items": {"type": "integer"},
                    "x-kubernetes-validations": [{"rule": "self.all(self, true)"}],
                }
            ),
            ".rule",
        ),
        (
            _obj_schema(
                x={
                    "type": "array",
                    "items": {"type": "integer"},
                    "x-kubernetes-validations": [{"rule": "self.all(i, i > 0) && i > 0"}],
                }
            ),
            ".rule",
        ),
        (
            _obj_schema(x={"type": "object", "x-kubernetes-validations": [{"rule": "true", "fieldPath": ".nope"}]}),
            "fieldPath",
        ),
        (
            _obj_schema(
                x={
                    "type": "string",
                    "x-kubernetes-validations": [{"rule": "self == oldSelf", "messageExpression": "'x'"}],
                }
            ),
            "messageExpression",
        ),
        (_obj_schema(x={"type": "integer", "default": "a"}), "properties[x].default"),
        (_obj_schema(x={"type": "object", "default": {"y": 1}}), "properties[x].default"),
    ],
)
def test_bad_schemas_are_refused_at_registration(schema: dict[str, Any], where: str) -> None:
    with pytest.raises(ValueError, match=r"\S+: ") as exc:
        CustomResource(_crd(schema))
    assert where in str(exc.value)


def test_bad_names_and_versions_are_refused() -> None:
    good = _crd(_obj_schema())
    for mutate, where in [
        (lambda c: c["metadata"].update(name="x.example.com"), "metadata.name"),
        (lambda c: c["spec"]["names"].pop("kind"), "spec.names.kind"),
        (lambda c: c["spec"]["versions"][0].update(served=False), "spec.versions"),
        (lambda c: c["spec"]["versions"][0].update(storage=False), "spec.versions"),
        (lambda c: c["spec"].update(scope="Global"), "spec.scope"),
        (
            lambda c: c["spec"]["versions"][0].update(
                additionalPrinterColumns=[{"name": "X", "type": "string", "jsonPath": ".a..b"}]
            ),
            "jsonPath",
        ),
    ]:
        crd = copy.deepcopy(good)
        mutate(crd)
        with pytest.raises(ValueError, match=where):
            CustomResource(crd)


@pytest.mark.parametrize(
    ("rule", "value", "ok"),
    [
        ("self.min <= self.max", {"min": 1, "max": 2}, True),
        ("self.min <= self.max", {"min": 3, "max": 2}, False),
        ("has(self.a) || has(self.b)", {"b": 1}, True),
        ("!has(self.a) && size(self.name) < 4", {"name": "abcd"}, False),
        ("self.mode != 'Execute' || self.grace >= 0", {"mode": "Execute", "grace": -1}, False),
        ('self.items[0] == "x"', {"items": ["x"]}, True),
        # macros over list elements and map keys, with a bound variable
        ("self.items.all(i, i != 'x')", {"items": ["a", "b"]}, True),
        ("self.items.all(i, i != 'x')", {"items": ["a", "x"]}, False),
        ("self.items.exists(i, i == 'x')", {"items": []}, False),
        ("self.budget.all(k, k == self.name)", {"budget": {"a.com/x": 1}, "name": "a.com/x"}, True),
        ("self.budget.all(k, k == self.name)", {"budget": {"a.com/x": 1, "b": 2}, "name": "a.com/x"}, False),
        ("self.rows.all(r, !has(r.values) || size(r.values) > 0)", {"rows": [{"values": []}]}, False),
        # string functions
        ("self.name.startsWith('requests.')", {"name": "requests.a/b"}, True),
        ("self.name.matches('^[a-z]+/[a-z]+$')", {"name": "nvidia/gpu"}, True),
        ("self.name.matches('^[a-z]+/[a-z]+$')", {"name": "nvidia/GPU"}, False),
        ("self.name.matches('g[pP]u')", {"name": "nvidia.com/gPu-x"}, True),  # a partial match, as RE2's
        ("self.name.endsWith('/gpu') && !self.name.contains('kubernetes.io/')", {"name": "nvidia.com/gpu"}, True),
        # && and || are commutative over errors: the deciding side wins over a missing key on the other
        ("self.a == 1 || true", {}, True),
        ("has(self.a) && self.a > 1 || self.min == 0", {"min": 0}, True),
    ],
)
def test_supported_rule_forms(rule: str, value: dict[str, Any], ok: bool) -> None:
    props = {k: {"type": "integer"} for k in ("min", "max", "a", "b", "grace")}
    props |= {
        "name": {"type": "string"},
        "mode": {"type": "string"},
        "items": {"type": "array", "items": {"type": "string"}},
        "budget": {"type": "object", "additionalProperties": {"type": "number"}},
        "rows": {
            "type": "array",
            "items": {"type": "object", "properties": {"values": {"type": "array", "items": {"type": "string"}}}},
        },
    }
    schema = _obj_schema()
    schema["properties"]["spec"] = {"type": "object", "properties": props, "x-kubernetes-validations": [{"rule": rule}]}
    cr = CustomResource(_crd(schema))
    causes = cr.validate(cr.default({"spec": value}), None)
    assert (causes == []) is ok, causes
    if not ok:
        assert causes[0]["message"] == f'Invalid value: "object": failed rule: {rule}'


def _rules_crd(rules: list[dict[str, Any]], **props: Any) -> CustomResource:
    schema = _obj_schema()
    schema["properties"]["spec"] = {"type": "object", "properties": props, "x-kubernetes-validations": rules}
    return CustomResource(_crd(schema))


def test_blocking_schema_errors_skip_every_rule_and_say_so() -> None:
    """strategy.go hasBlockingErr: type, required, enum, too long and too many errors stop all CEL rules
    (the object lacks the shape they were written for); other schema errors do not."""
    cr = _rules_crd(
        [{"rule": "self.n > 5", "message": "n must exceed 5"}],
        n={"type": "integer", "minimum": 0},
        mode={"type": "string", "enum": ["A", "B"]},
    )
    assert cr.validate({"spec": {"n": 1, "mode": "C"}}, None) == [
        {
            "reason": "FieldValueNotSupported",
            "message": 'Unsupported value: "C": supported values: "A", "B"',
            "field": "spec.mode",
        },
        RULES_NOT_CHECKED,
    ]
    assert cr.validate({"spec": {"n": -1}}, None) == [  # minimum is not blocking: the rule runs too
        {
            "reason": "FieldValueInvalid",
            "message": "Invalid value: -1: spec.n in body should be greater than or equal to 0",
            "field": "spec.n",
        },
        {"reason": "FieldValueInvalid", "message": 'Invalid value: "object": n must exceed 5', "field": "spec"},
    ]
    plain = CustomResource(_crd(_obj_schema(mode={"type": "string", "enum": ["A"]})))
    assert RULES_NOT_CHECKED not in plain.validate({"spec": {"mode": "C"}}, None), "no rules, no CEL validator"


def test_rule_reasons_field_paths_and_evaluation_errors() -> None:
    """A failed rule is reported at its fieldPath with its reason; a rule that cannot be evaluated at
    its own node, worded as validateExpressions words runtime errors."""
    cr = _rules_crd(
        [
            {"rule": "has(self.values)", "reason": "FieldValueRequired", "fieldPath": ".values", "message": "need"},
            {"rule": "!has(self.extra)", "reason": "FieldValueForbidden", "fieldPath": ".extra", "message": "no"},
            {"rule": "self.values[0] == 'a'", "fieldPath": ".values", "message": "first must be a"},
        ],
        values={"type": "array", "items": {"type": "string"}},
        extra={"type": "string"},
    )
    assert cr.validate({"spec": {"extra": "x"}}, None) == [
        {"reason": "FieldValueRequired", "message": "Required value: need", "field": "spec.values"},
        {"reason": "FieldValueForbidden", "message": "Forbidden: no", "field": "spec.extra"},
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "object": no such key: values evaluating rule: first must be a',
            "field": "spec",
        },
    ]
    assert cr.validate({"spec": {"values": ["b"]}}, None) == [
        {"reason": "FieldValueInvalid", "message": 'Invalid value: "object": first must be a', "field": "spec.values"}
    ]


def test_nulls_defaults_and_int_or_string() -> None:
    schema = _obj_schema(
        q={"type": "string", "default": "default"},
        n={"type": "string", "nullable": True},
        gone={"type": "string"},
        res={
            "type": "object",
            "additionalProperties": {
                "x-kubernetes-int-or-string": True,
                "anyOf": [{"type": "integer"}, {"type": "string"}],
            },
        },
    )
    cr = CustomResource(_crd(schema))
    out = cr.default({"spec": {"q": None, "n": None, "gone": None, "res": {"cpu": "500m", "gpu": 2}}})
    assert out["spec"] == {"q": "default", "n": None, "res": {"cpu": "500m", "gpu": 2}}
    assert cr.validate(out, None) == []
    bad = cr.validate(cr.default({"spec": {"res": {"x": 1.5}}}), None)
    assert bad and bad[-1]["message"].endswith("must validate at least one schema (anyOf)")


def test_ratcheting_keeps_unchanged_invalid_fields_editable() -> None:
    """CRDValidationRatcheting: an unchanged invalid subtree does not block other edits."""
    cr = CustomResource(_crd(_obj_schema(a={"type": "integer", "minimum": 5}, b={"type": "string"})))
    old = {"spec": {"a": 1, "b": "x"}}
    assert cr.validate({"spec": {"a": 1, "b": "y"}}, old) == []
    assert cr.validate({"spec": {"a": 2, "b": "y"}}, old) != []


def test_table_has_name_printer_columns_and_partial_metadata() -> None:
    obj = RR.default(_run())
    obj["metadata"]["creationTimestamp"] = "2026-07-30T10:00:00Z"
    obj["status"] = {
        "phase": "Succeeded",
        "conditions": [  # Reason shows the condition that is True: the one describing the current state
            {"type": "Waiting", "status": "False", "reason": "AnotherRunActive"},
            {"type": "Complete", "status": "True", "reason": "RepackRecommended"},
        ],
        "plan": {
            "summary": {"freedNodeCount": 1, "fragBeforePercent": 33.3, "fragAfterPercent": 0, "movedCardCount": 2}
        },
        "result": {"fragAfterPercent": 12.5},
    }
    table = RR.table([obj], now=datetime(2026, 7, 30, 10, 5, 30, tzinfo=timezone.utc))
    names = [(c["name"], c["priority"]) for c in table["columnDefinitions"]]
    assert names[0] == ("Name", 0) and names[7] == ("Age", 0)
    assert [n for n, p in names if p == 0] == [
        "Name",
        "Mode",
        "Phase",
        "Reason",
        "Frag-Before",
        "Frag-After",
        "Freed",
        "Age",
    ]
    assert [n for n, p in names if p == 1] == ["Resource", "Moved", "Actual-Frag", "Actual-Freed"]
    row = table["rows"][0]
    assert row["cells"] == [
        "ascend-guarded-dryrun",
        "DryRun",
        "Succeeded",
        "RepackRecommended",
        33.3,
        0.0,
        1,
        "5m30s",
        "huawei.com/ascend-1980",
        2.0,
        12.5,
        None,  # unset: a nil cell, which kubectl prints blank
    ]
    assert (
        row["object"]["kind"] == "PartialObjectMetadata"
        and row["object"]["metadata"]["name"] == "ascend-guarded-dryrun"
    )


def test_default_age_column_when_none_declared() -> None:
    cr = CustomResource(_crd(_obj_schema()))
    assert [c["name"] for c in cr.table([])["columnDefinitions"]] == ["Name", "Age"]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (59, "59s"),
        (119, "119s"),
        (120, "2m"),
        (330, "5m30s"),
        (3600, "60m"),
        (4 * 3600 + 60, "4h1m"),
        (30 * 3600, "30h"),
        (3 * 86400 + 3600, "3d1h"),
        (400 * 86400, "400d"),
        (3 * 365 * 86400, "3y"),
    ],
)
def test_human_duration(seconds: int, text: str) -> None:
    """apimachinery pkg/util/duration/duration.go HumanDuration."""
    assert human_duration(seconds) == text


_label = st.text("abcdefghij-./", min_size=1, max_size=12)
_resource = st.builds(
    "{}.{}/{}".format,
    st.from_regex(r"[a-z0-9]([-a-z0-9]{0,8}[a-z0-9])?", fullmatch=True),
    st.sampled_from(["com", "io", "example.org"]),
    st.from_regex(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,10}[A-Za-z0-9])?", fullmatch=True),
)
_names = st.lists(st.from_regex(r"[a-z0-9]([-a-z0-9]{0,6}[a-z0-9])?/[a-z0-9]{1,8}", fullmatch=True), max_size=3)
_label_value = st.from_regex(r"(([A-Za-z0-9][-A-Za-z0-9_.]{0,8})?[A-Za-z0-9])?", fullmatch=True)
_expression = st.one_of(
    st.fixed_dictionaries(
        {
            "key": st.just("a.b/c"),
            "operator": st.sampled_from(["In", "NotIn"]),
            "values": st.lists(_label_value, min_size=1),
        }
    ),
    st.fixed_dictionaries({"key": st.just("k"), "operator": st.sampled_from(["Exists", "DoesNotExist"])}),
)
_filter = st.fixed_dictionaries(
    {},
    optional={
        "names": _names,
        "selector": st.fixed_dictionaries(
            {},
            optional={
                "matchLabels": st.dictionaries(_label, _label_value, max_size=2),
                "matchExpressions": st.lists(_expression, max_size=2),
            },
        ),
    },
)
_specs = st.fixed_dictionaries(
    {
        "mode": st.sampled_from(["DryRun", "Execute"]),
        "goals": st.lists(
            st.fixed_dictionaries({"resource": _resource}, optional={"minFragImprovementPercent": st.floats(0, 100)}),
            min_size=1,
            max_size=1,
        ),
    },
    optional={
        "scope": st.fixed_dictionaries(
            {}, optional={"podGroups": st.fixed_dictionaries({}, optional={"include": _filter, "exclude": _filter})}
        ),
        "maxPerRun": st.fixed_dictionaries(
            {},
            optional={"podGroups": st.integers(0, 2**31 - 1), "resources": st.floats(0, 64)},
        ),
        "ttlSecondsAfterFinished": st.integers(0, 10**9),
        "planner": st.fixed_dictionaries({}, optional={"movedPodsWeight": st.floats(0, 10)}),
        "junk": st.integers(),
    },
)


@settings(max_examples=150, deadline=None)
@given(_specs)
def test_generated_valid_runs_validate_and_default_is_idempotent(spec: dict[str, Any]) -> None:
    budget = spec.get("maxPerRun", {})
    if "resources" in budget:  # the budget is keyed by the goal resource
        budget["resources"] = {spec["goals"][0]["resource"]: budget["resources"]}
    obj = {"apiVersion": "repack.volcano.sh/v1alpha1", "kind": "RepackRun", "metadata": {"name": "x"}, "spec": spec}
    once = RR.default(obj)
    assert RR.default(once) == once
    assert RR.validate(once, None) == []
    assert RR.validate(once, copy.deepcopy(once)) == []
