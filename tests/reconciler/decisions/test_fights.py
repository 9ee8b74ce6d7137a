"""Fight detection (pure): thresholds, growing backoff, the end of a fight."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from memcached_gitops.foundation.clocks import Monotonic as M
from memcached_gitops.reconciler.decisions.fights import FightDetector

REPLICAS = ".spec.replicas"


def test_a_few_corrections_are_no_fight() -> None:
    d = FightDetector(threshold=3, window=120)
    assert [d.record("k", "ns/a", REPLICAS, "kubectl (scale)", M(t)) for t in (0, 1, 2)] == [None, None, None]
    assert d.wait("k", M(3)) == 0 and d.active("k", M(3)) is None


def test_one_too_many_within_the_window_is_a_fight_naming_field_and_manager() -> None:
    d = FightDetector(threshold=3, window=120, base=10, cap=300)
    for t in (0, 1, 2):
        d.record("k", "ns/a", REPLICAS, "hpa-script", M(t))
    fight = d.record("k", "ns/a", REPLICAS, "hpa-script", M(3))
    assert fight is not None and fight.delay == 10 and fight.corrections == 4
    assert ".spec.replicas" in fight.message and "hpa-script" in fight.message and "ns/a" in fight.message
    assert d.wait("k", M(5)) == 8
    assert d.active("k", M(5)) == fight


def test_corrections_spread_over_more_than_the_window_are_no_fight() -> None:
    d = FightDetector(threshold=3, window=120)
    assert all(d.record("k", "ns/a", REPLICAS, "kubectl (scale)", M(t)) is None for t in range(0, 1000, 60))


def test_other_fields_and_managers_count_apart() -> None:
    d = FightDetector(threshold=3, window=120)
    for t in range(3):
        assert d.record("k", "ns/a", REPLICAS, "one", M(t)) is None
        assert d.record("k", "ns/a", REPLICAS, "two", M(t)) is None
        assert d.record("k", "ns/a", ".spec.template.spec.containers[name=\"memcached\"].image", "one", M(t)) is None


def test_the_same_field_of_another_object_counts_apart_and_the_fight_names_its_object() -> None:
    """A Service's and the Deployment's corrections of one path never add up; nor two Services'."""
    d = FightDetector(threshold=2, window=120)
    labels = ".metadata.labels.team"
    for t in range(2):
        assert d.record("k", "ns/a", labels, "x", M(t)) is None
        assert d.record("k", "ns/a-memcached", labels, "x", M(t), kind="Service") is None
        assert d.record("k", "ns/b-memcached", labels, "x", M(t), kind="Service") is None
    fight = d.record("k", "ns/a-memcached", labels, "x", M(3), kind="Service")
    assert fight is not None and (fight.kind, fight.name, fight.label) == ("Service", "ns/a-memcached", "Service " + labels)
    assert fight.message.startswith(".metadata.labels.team of Service ns/a-memcached was corrected 3 times in 120s")
    assert FightDetector(threshold=0).record("k", "ns/a", REPLICAS, "x", M(0)).label == REPLICAS, "a Deployment's field: its plain name"


def test_after_a_fight_only_the_same_objects_field_is_the_next_one() -> None:
    d = FightDetector(threshold=1, window=1000, base=10, cap=30)
    d.record("k", "ns/a-memcached", REPLICAS, "x", M(0), kind="Service")
    assert d.record("k", "ns/a-memcached", REPLICAS, "x", M(1), kind="Service") is not None
    assert d.record("k", "ns/a", REPLICAS, "x", M(20)) is None, "the Deployment's field is not the Service's"
    assert d.record("k", "ns/a-memcached", REPLICAS, "x", M(20), kind="Service") is not None


def test_after_a_fight_only_the_same_manager_is_the_next_one() -> None:
    """After a fight with an HPA over replicas, one correction undone by a person (``kubectl scale``) is
    no new fight at once: it counts from zero, as any other manager's, and is never named after the HPA."""
    d = FightDetector(threshold=1, window=1000, base=10, cap=300)
    d.record("k", "ns/a", REPLICAS, "hpa", M(0))
    assert d.record("k", "ns/a", REPLICAS, "hpa", M(1)) is not None
    assert d.record("k", "ns/a", REPLICAS, "kubectl (scale)", M(20)) is None
    fight = d.record("k", "ns/a", REPLICAS, "hpa", M(30))
    assert fight is not None and fight.manager == "hpa" and fight.delay == 20, "the HPA again: the next fight, its backoff doubled"


def test_the_backoff_doubles_with_each_fight_in_a_row_up_to_the_cap() -> None:
    """After a fight, one more correction undone by the same manager is the next fight: one write per delay."""
    d = FightDetector(threshold=1, window=1000, base=10, cap=30)
    d.record("k", "ns/a", REPLICAS, "x", M(0))
    delays = [d.record("k", "ns/a", REPLICAS, "x", M(0.001)).delay]
    t = 0.001
    for _ in range(3):
        t += delays[-1] + 0.01
        delays.append(d.record("k", "ns/a", REPLICAS, "x", M(t)).delay)
    assert delays == [10, 20, 30, 30]


def test_the_fight_ends_after_a_quiet_window() -> None:
    d = FightDetector(threshold=1, window=60, base=10)
    d.record("k", "ns/a", REPLICAS, "x", M(0))
    assert d.record("k", "ns/a", REPLICAS, "x", M(1)) is not None
    assert d.active("k", M(60)) is not None
    assert d.active("k", M(72)) is None, "quiet for the window after the 10 s backoff"
    assert d.record("k", "ns/a", REPLICAS, "x", M(80)) is None, "counting starts again"


def test_the_window_and_the_quiet_time_include_their_last_instant() -> None:
    """A correction exactly ``window`` old still counts; the fight is still reported at exactly the end."""
    d = FightDetector(threshold=1, window=60, base=10)
    d.record("k", "ns/a", REPLICAS, "x", M(0))
    fight = d.record("k", "ns/a", REPLICAS, "x", M(60))
    assert fight is not None and fight.corrections == 2
    assert d.active("k", M(60 + 10 + 60)) == fight
    assert d.active("k", M(60 + 10 + 60.5)) is None


def test_the_wait_is_the_rest_of_the_backoff_even_under_a_second() -> None:
    d = FightDetector(threshold=1, window=60, base=10)
    d.record("k", "ns/a", REPLICAS, "x", M(0))
    d.record("k", "ns/a", REPLICAS, "x", M(1))
    assert d.wait("k", M(10.5)) == 0.5
    assert d.wait("k", M(12)) == 0


def test_forget_drops_only_that_crs_corrections() -> None:
    d = FightDetector(threshold=1, window=60)
    d.forget("unknown")  # a CR never seen (deleted before its first correction)
    for key in ("a", "b"):
        d.record(key, "ns/" + key, REPLICAS, "x", M(0))
    d.forget("a")
    assert d.record("a", "ns/a", REPLICAS, "x", M(1)) is None, "a's earlier correction is forgotten"
    assert d.record("b", "ns/b", REPLICAS, "x", M(1)) is not None, "b's is kept"


def test_each_fight_counts_the_corrections_since_the_last_and_a_field_left_starts_from_zero() -> None:
    """A fight's "corrected N times" counts the corrections since that field's last fight: in a row, each
    fight is the one correction after the backoff. A field fought over, then left while the fight moves
    to another field, counts from zero when it is corrected again: its old corrections made a fight
    already, and are never counted twice."""
    image = '.spec.template.spec.containers[name="memcached"].image'
    d = FightDetector(threshold=2, window=1000, base=10, cap=300)
    for t in (0, 1):
        d.record("k", "ns/a", REPLICAS, "hpa", M(t))
    first = d.record("k", "ns/a", REPLICAS, "hpa", M(2))
    second = d.record("k", "ns/a", REPLICAS, "hpa", M(20))
    assert first is not None and second is not None and (first.corrections, second.corrections) == (3, 1)
    assert "was corrected once in 1000s" in second.message
    assert [d.record("k", "ns/a", image, "x", M(t)) is None for t in (60, 61, 62)] == [True, True, False]
    assert d.record("k", "ns/a", REPLICAS, "hpa", M(200)) is None, "replicas' old corrections made their fights already"


def test_a_fight_that_never_ends_stays_at_the_cap() -> None:
    """Another manager undoing the same field for days: each fight after the backoff is one level up,
    and past 1,024 levels the delay is still the cap, never an OverflowError out of the reconcile."""
    d = FightDetector(threshold=0, window=120.0, base=10.0, cap=300.0)  # floats, as the defaults
    now = 0.0
    for _ in range(1100):
        fight = d.record("k", "ns/a", REPLICAS, "hpa-script", M(now))
        assert fight is not None
        now += fight.delay + 1
    assert fight.delay == 300


# ---- properties: a second writer beside the first, differing in one thing only
_FIRST = ("k", "Deployment", "ns/a", REPLICAS, "hpa-script")
#: what may differ: the CR, the kind (a Service and a budget may share a name), the object, the field, the manager
_SECOND = {0: "k2", 1: "PodDisruptionBudget", 2: "ns/b", 3: ".spec.template.metadata.labels.team", 4: "kubectl-edit"}


def _first_fight(times: list[int], threshold: int, window: int) -> tuple[int, int] | None:
    """The instant of the first correction with more than ``threshold`` of its stream within the
    ``window`` seconds up to it (both ends included), and that count."""
    for i, now in enumerate(times):
        count = sum(1 for t in times[:i + 1] if t >= now - window)
        if count > threshold:
            return now, count
    return None


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 400), unique=True, min_size=1, max_size=25).map(sorted), st.data(),
       st.sampled_from(sorted(_SECOND)), st.integers(1, 4), st.integers(10, 200))
def test_corrections_of_another_cr_kind_object_field_or_manager_never_add_up(times: list[int], data, differs: int,
                                                                            threshold: int, window: int) -> None:
    """A fight is counted per CR, kind, object, field and manager: with a second stream of corrections
    interleaved that differs from the first in one of these, the first fight is the one either stream
    alone would have had first, counted from its own corrections only."""
    second = tuple(_SECOND[i] if i == differs else v for i, v in enumerate(_FIRST))
    streams = data.draw(st.lists(st.sampled_from((_FIRST, second)), min_size=len(times), max_size=len(times)))
    d = FightDetector(threshold=threshold, window=window)
    alone = {s: _first_fight([t for t, w in zip(times, streams, strict=True) if w == s], threshold, window) for s in (_FIRST, second)}
    expected = min(((f[0], f[1], s) for s, f in alone.items() if f), default=None)
    for t, (key, kind, name, path, manager) in zip(times, streams, strict=True):
        fight = d.record(key, name, path, manager, M(t), kind=kind)
        if expected is not None and t == expected[0]:
            s = expected[2]
            assert fight is not None and (fight.kind, fight.name, fight.field, fight.manager, fight.corrections) == (
                s[1], s[2], s[3], s[4], expected[1])
            return
        assert fight is None, (t, fight)
    assert expected is None


def test_one_correction_after_a_fight_is_over_is_no_fight_whether_or_not_anyone_asked_in_between() -> None:
    """The fight is over once the field has stayed corrected for ``window`` after the backoff: a
    single correction after that (a person's ``kubectl scale`` a few minutes later) starts counting
    again, as it does when ``active`` happened to be asked in between. The controller asks
    ``record`` first, at the first reconcile after a quiet spell (controller.py ``_fight_check``),
    and between two resyncs nothing else may ask: the end of a fight is read by the clock at the
    next correction, not by whoever last looked."""
    d = FightDetector(threshold=1, window=60, base=10)
    d.record("k", "ns/a", REPLICAS, "x", M(0))
    assert d.record("k", "ns/a", REPLICAS, "x", M(1)) is not None
    assert d.record("k", "ns/a", REPLICAS, "x", M(200)) is None, "a fight over 129 s ago came back from one correction"
    assert d.wait("k", M(200)) == 0 and d.active("k", M(200)) is None


def test_the_controllers_detector_tells_a_person_from_an_hpa_and_backs_off_10_s_doubling_to_300_s() -> None:
    """The controller takes the detector's defaults (controller.py ``FightDetector()``), which the module
    sets against the writers it meets: a person running ``kubectl scale`` three times in a minute is no
    fight, an HPA (15 s sync period) undoing us four times in a minute is; four corrections spread over
    more than two minutes are none; the CR then waits 10 s, doubling with each fight in a row up to
    Crossplane's five-minute open period, so a fight costs at most one write per backoff."""
    person = FightDetector()
    assert [person.record("k", "ns/a", REPLICAS, "kubectl", M(t)) for t in (0, 20, 40)] == [None, None, None]
    slow = FightDetector()
    assert [slow.record("k", "ns/a", REPLICAS, "hpa", M(t)) for t in (0, 41, 82, 123)] == [None] * 4, "the first is past 120 s"
    hpa = FightDetector()
    assert [hpa.record("k", "ns/a", REPLICAS, "hpa", M(t)) for t in (0, 15, 30)] == [None, None, None]
    fight = hpa.record("k", "ns/a", REPLICAS, "hpa", M(45))
    assert fight is not None and (fight.corrections, fight.window, fight.delay) == (4, 120.0, 10.0)
    now, delays = 45.0, []
    for _ in range(7):
        now += hpa.wait("k", M(now))
        again = hpa.record("k", "ns/a", REPLICAS, "hpa", M(now))
        assert again is not None
        delays.append(again.delay)
    assert delays == [20.0, 40.0, 80.0, 160.0, 300.0, 300.0, 300.0]
