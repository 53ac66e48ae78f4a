#!/usr/bin/env python3
"""Summarise a ledger given as CSV on stdin: one total per currency."""
import csv
import sys

totals = {}
for row in csv.DictReader(sys.stdin):
    totals[row["currency"]] = totals.get(row["currency"], 0) + float(row["amount"])
for currency, total in sorted(totals.items()):
    print(f"{currency} {total:.2f}")
