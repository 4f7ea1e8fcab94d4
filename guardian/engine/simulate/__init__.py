"""Replay the rule engine and the remediation planner over history (``guardian simulate``).

Pure: range-query answers and a cluster snapshot in, alert timelines, would-be ladder
steps and their cost out. The app layer fetches the history in chunks and feeds it here.
"""
