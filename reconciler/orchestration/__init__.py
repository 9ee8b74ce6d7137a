"""What runs the decisions against the client: the per-CR step and the LIST-based cycle (cycle), the
event-driven controller, the loop, metrics, the command's wiring (main) and the diff verb (diff).
"""
