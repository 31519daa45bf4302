"""Screening: which skills cannot become an offline task (accounts, live services, hardware, lures, licences), each
verdict with the evidence that decided it. The rules are data (data/screening_rules.yaml); this package applies
them."""
