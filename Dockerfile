# The axon CLI in a container: `docker build -t axon .`, then `docker run axon serve ...` or
# `docker run axon worker ...` (docker-compose.yml runs a small fleet with it).
FROM node:20-bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
COPY . .
RUN npm ci && npm run build
ENTRYPOINT ["node", "bin/axon.js"]
