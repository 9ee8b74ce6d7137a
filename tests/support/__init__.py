"""What the tests share: building CRs and reconcilers against the fake API server, waiting for a
running controller, a manual clock, and running the command line. One place, so a test module
never imports from another test module."""
