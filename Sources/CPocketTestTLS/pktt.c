int pktt_placeholder(void) { return 0; }
