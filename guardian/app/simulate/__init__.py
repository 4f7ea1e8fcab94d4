"""``guardian simulate``: the rule pack and the policies replayed over history."""
