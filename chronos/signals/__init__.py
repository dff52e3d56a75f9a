"""Live signals of a running job from sources that survive a TaskManager loss."""
