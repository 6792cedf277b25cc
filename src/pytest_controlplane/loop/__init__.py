"""The reference agent loop and its session store (the seed design, hardened): usable without pytest."""
