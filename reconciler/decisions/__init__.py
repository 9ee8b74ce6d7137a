"""Pure decisions of the reconciler: no I/O, no clock read, no Kubernetes client. Each module answers
one question (drift, plan, ownership, status, fights, selectors, autoscalers, ignore) in the
reconciler's vocabulary.
"""
