"""The seeded damage campaign (`damage_campaign.py`) on a few hundred damaged entry
logs and journals: every read of every file is checked against the undamaged
original (intact records come back verified at their offsets, damaged ones are
never verified and are flagged where they are, tiled ranges read as the whole file,
ledgers maps are never trusted wrongly, no crash, no hang, bounded memory).
`python tests/damage_campaign.py --files 3000 --seed N` runs a longer campaign."""

from __future__ import annotations

import damage_campaign


def test_damage_campaign():
    outcome = damage_campaign.run(files=500, seed=13)
    report = damage_campaign.report(outcome)
    failures = "\n".join(repr(f)[:2000] for f in outcome.failures[:20])
    assert not [k for k in outcome.counts if k.startswith("FAIL")], f"{report}\n{failures}"
    # The campaign did what it says: damage of every kind, on both file kinds, and
    # records checked both ways.
    kinds = {k.split(" ", 1)[1] for k in outcome.counts if k.startswith("damage ")}
    assert {"flip", "run", "zero512", "zero4k", "f0", "truncate", "dup4k", "del4k", "header", "map"} <= kinds
    assert {"size-zero", "size-plus1", "size-minus1", "size-huge", "size-negative"} <= kinds
    assert outcome.counts["files entry_log"] > 100 and outcome.counts["files journal"] > 100
    assert outcome.counts["intact records"] > 10_000 and outcome.counts["damaged records"] > 300
