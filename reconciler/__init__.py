"""The in-cluster drift reconciler (server-side apply, status conditions).

Not built yet: see the issue tracker. The kubernetes client is imported only here, so that
``render`` and ``validate`` start fast.
"""
