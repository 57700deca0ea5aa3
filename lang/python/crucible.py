"""Crucible's module for programs run by `crucible run --lang py`.

Set `crucible.result` to any value JSON can encode; it becomes the
execution's result.
"""

result = None
