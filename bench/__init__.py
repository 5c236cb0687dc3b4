"""awf's benchmarks: awf beside the disk's floor and beside its peers, in one run.

`python -m bench [--quick]` runs every family and prints one table. A family is a module with
`figures(session: Session) -> list[Figure]` (see harness.py and session.py); its samples are taken
in rounds that interleave a figure with its baseline, and each row shows the ratio of the two
medians. Nothing here asserts a time: the goals are printed, met or missed.
"""
