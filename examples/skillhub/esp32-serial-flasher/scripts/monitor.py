"""Print the ESP32 boot log from a serial port (needs pyserial and a connected board)."""
import sys

import serial  # pyserial

with serial.Serial(sys.argv[1], int(sys.argv[2]), timeout=5) as port:
    for _ in range(200):
        line = port.readline().decode(errors="replace").rstrip()
        if line:
            print(line)
