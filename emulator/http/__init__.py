"""emulator.http."""
