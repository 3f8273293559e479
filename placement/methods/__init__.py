"""Methods: each one module with a function ``(instance, Options) -> Outcome``, registered
in :data:`placement.solving.REGISTRY` and imported only when it runs.

greedy, local_search (with re-planning in replan), baselines, bruteforce, auto, pop, saa,
comm_optimal, and exact: the one wrapper that runs every exact backend of
:mod:`placement.formulations`."""
