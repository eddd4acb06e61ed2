//! A minimal WebSocket JSON-RPC client for the tests (soketto, which the server uses too): a
//! task reads every message into a queue (so a wait with a timeout loses nothing), requests are
//! answered by id, notifications queued until asked for; a client may start without reading,
//! on a small receive buffer, to play one that does not read.

#![allow(dead_code, unreachable_pub)]

use serde_json::{json, Value};
use std::{collections::VecDeque, net::SocketAddr, time::Duration};
use tokio::net::TcpSocket;
use tokio_util::compat::{Compat, TokioAsyncReadCompatExt};

type Stream = Compat<tokio::net::TcpStream>;

/// A connected client.
pub struct WsClient {
    sender: soketto::Sender<Stream>,
    /// The socket's reading half until [`WsClient::start_reading`] hands it to the reader.
    receiver: Option<soketto::Receiver<Stream>>,
    messages: tokio::sync::mpsc::UnboundedReceiver<Value>,
    messages_in: Option<tokio::sync::mpsc::UnboundedSender<Value>>,
    notifications: VecDeque<Value>,
    /// Answers read while waiting for another (calls are answered as they finish).
    answers: Vec<Value>,
    next_id: u64,
}

/// Why a handshake failed: the server's HTTP status.
#[derive(Debug, PartialEq, Eq)]
pub struct Refused(pub u16);

impl WsClient {
    /// Connects to `addr` sending `origin` as the `Origin` header (none: no header), with a
    /// socket receive buffer of `recv_buffer` bytes when given; reading starts at once unless
    /// a buffer size is given ([`WsClient::start_reading`]).
    pub async fn connect_with(
        addr: SocketAddr,
        origin: Option<&str>,
        recv_buffer: Option<u32>,
    ) -> Result<Self, Refused> {
        let socket = TcpSocket::new_v4().unwrap();
        if let Some(size) = recv_buffer {
            socket.set_recv_buffer_size(size).unwrap();
        }
        let stream = socket.connect(addr).await.unwrap();
        let host = addr.to_string();
        let mut client = soketto::handshake::Client::new(stream.compat(), &host, "/");
        let headers;
        if let Some(origin) = origin {
            headers =
                [soketto::handshake::client::Header { name: "Origin", value: origin.as_bytes() }];
            client.set_headers(&headers);
        }
        match client.handshake().await.unwrap() {
            soketto::handshake::ServerResponse::Accepted { .. } => {}
            soketto::handshake::ServerResponse::Rejected { status_code } => {
                return Err(Refused(status_code))
            }
            soketto::handshake::ServerResponse::Redirect { status_code, .. } => {
                return Err(Refused(status_code))
            }
        }
        let (sender, receiver) = client.into_builder().finish();
        let (messages_in, messages) = tokio::sync::mpsc::unbounded_channel();
        let mut client = Self {
            sender,
            receiver: Some(receiver),
            messages,
            messages_in: Some(messages_in),
            notifications: VecDeque::new(),
            answers: Vec::new(),
            next_id: 1,
        };
        if recv_buffer.is_none() {
            client.start_reading();
        }
        Ok(client)
    }

    /// Starts reading the socket (once).
    pub fn start_reading(&mut self) {
        let (Some(mut receiver), Some(messages)) = (self.receiver.take(), self.messages_in.take())
        else {
            return;
        };
        tokio::spawn(async move {
            loop {
                let mut data = Vec::new();
                if receiver.receive_data(&mut data).await.is_err() {
                    return;
                }
                if messages.send(serde_json::from_slice(&data).unwrap()).is_err() {
                    return;
                }
            }
        });
    }

    /// Connects to `addr` as a non-browser client (no `Origin`).
    pub async fn connect(addr: SocketAddr) -> Self {
        Self::connect_with(addr, None, None).await.expect("handshake accepted")
    }

    /// Sends `method(params)` without waiting for the answer; its id.
    pub async fn send(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.sender.send_text(body.to_string()).await.unwrap();
        self.sender.flush().await.unwrap();
        id
    }

    /// The next message (`None` when the connection closed or after 30 s).
    async fn receive(&mut self) -> Option<Value> {
        tokio::time::timeout(Duration::from_secs(30), self.messages.recv()).await.ok().flatten()
    }

    /// The answer to request `id` (result or error object), queuing notifications.
    pub async fn answer(&mut self, id: u64) -> Value {
        if let Some(i) = self.answers.iter().position(|a| a["id"] == json!(id)) {
            return self.answers.swap_remove(i);
        }
        loop {
            let message = self.receive().await.expect("an answer");
            if message.get("id") == Some(&json!(id)) {
                return message;
            }
            if message.get("id").is_some() {
                self.answers.push(message);
            } else {
                assert_eq!(message["method"], "eth_subscription", "{message}");
                self.notifications.push_back(message);
            }
        }
    }

    /// `method(params)`'s result; panics on an error.
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params).await;
        let answer = self.answer(id).await;
        assert!(answer.get("error").is_none(), "{method}: {answer}");
        answer["result"].clone()
    }

    /// The next notification's `params` (`{subscription, result}` or `{subscription,
    /// error}`), `None` when none comes within 30 s.
    pub async fn notification(&mut self) -> Option<Value> {
        if let Some(n) = self.notifications.pop_front() {
            return Some(n["params"].clone());
        }
        let message = self.receive().await?;
        assert_eq!(message["method"], "eth_subscription", "{message}");
        Some(message["params"].clone())
    }

    /// The next notification of subscription `id`, those of others kept in order.
    pub async fn notification_of(&mut self, id: &Value) -> Value {
        if let Some(i) = self.notifications.iter().position(|n| &n["params"]["subscription"] == id)
        {
            return self.notifications.remove(i).unwrap()["params"].clone();
        }
        loop {
            let message = self.receive().await.unwrap_or_else(|| panic!("a notification of {id}"));
            if &message["params"]["subscription"] == id {
                return message["params"].clone();
            }
            self.notifications.push_back(message);
        }
    }
}
