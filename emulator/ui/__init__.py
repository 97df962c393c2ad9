"""emulator.ui."""
