"""emulator.payments."""
