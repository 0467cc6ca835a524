"""Policy: what lathe lets a tool call do (command analysis, approval, the sandbox's rules).

`lathe.policy.command` is the command guard: `analyze()` parses a bash command and says
deny, ask or allow; `matches_rule()` tests a simple command against a rule pattern.
"""
