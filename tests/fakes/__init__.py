"""Local stand-ins for the model APIs the agent policies call (loopback HTTP servers; nothing leaves the machine)."""
