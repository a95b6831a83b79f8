//! OpenHands event streams, SWE-agent and mini-swe-agent trajectories.
