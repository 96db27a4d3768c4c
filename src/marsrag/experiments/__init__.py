"""Experiments on a workflow's loop mode: arm assignment, the statistics of a comparison and its report.

A workflow's ``experiment`` (:class:`marsrag.tasks.config.ExperimentConfig`) assigns each new session an arm
by a hash of its id; the report compares the arms' loop metrics with confidence intervals.
"""
