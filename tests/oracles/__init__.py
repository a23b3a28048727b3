"""Independent test oracles: implementations of multibody dynamics that share no code with
:mod:`flexdyn` and are used to cross-check it.

* :mod:`oracles.brute_force` — Kane's method on every mass element (rigid and flexible);
* :mod:`oracles.rigid_reference` — Featherstone's RNEA, CRBA and ABA for rigid trees;
* :mod:`oracles.kwatny_disk` — Kwatny & Blankenship's printed thin-disk equations (55a–b).
"""
