"""Reliability harnesses: zero-network guard, crash rounds, concurrent load, hostile inputs, security checks.

Each module is a library the tests call with short settings; `run_all.py` (`make reliability`) calls
them with the long ones and writes RELIABILITY.md at the repository root.
"""
