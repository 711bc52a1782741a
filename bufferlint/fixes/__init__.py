"""Codemods: the edits each fix is made of, and the machinery that applies them."""
