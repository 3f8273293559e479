"""Helpers of the tests (not tests): oracles, documents, schema checks, a real slurmctld."""
