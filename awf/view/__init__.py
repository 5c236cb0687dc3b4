"""How an attempt shows its progress and its ending to a person."""
