"""The job queue: runs and operator actions executed by Celery workers (``marsrag worker``) over a broker.

Only used when ``MARSRAG_BROKER`` (or ``--broker``) names one; the embedded setup executes in-process.
"""
