"""The control loop that keeps a live job's checkpoint interval where its QoS targets hold."""
