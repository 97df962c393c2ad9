"""The bottom floor: errors, the vocabulary, settings, data files and safe parsing, and the values
of a payment (cards, amounts, the clock, masking, budgets).
"""
