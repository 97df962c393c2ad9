"""emulator.http.pages."""
