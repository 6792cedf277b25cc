#!/bin/sh
echo "deploying (example: nothing is deployed)"
