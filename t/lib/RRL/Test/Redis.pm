package RRL::Test::Redis;

# The redis-server of a test file, as methods of its RRL::Test (a parent
# class of it): started under the test's directory on a free port, with a
# unix socket, no persistence; redis-cli to it.
#
#   $t->start_redis(password => 'x', args => [...]);
#   $t->redis('GET', 'k');            # redis-cli's output ('' for nil)
#   $t->redis_db(1, 'KEYS', '*');     # the same in another db
#   $t->signal_redis('STOP');         # a Redis that hangs
#   $t->stop_redis; $t->start_redis;  # again, on the same port
#   $t->redis_time;                   # Redis's clock, float seconds
#   $t->wait_window(60, 3);           # 3 s left in the 60 s window
#   $t->fw_count($key, $window);      # a fixed_window state's count
#   $t->commandstats->{evalsha};      # INFO commandstats' calls

use strict;
use warnings;

use Carp qw(croak);
use IO::Socket::INET;
use POSIX qw(:sys_wait_h);
use Time::HiRes qw(time sleep);

use RRL::Test::Env qw(redis_server_binary redis_cli_binary run_command
    read_file);
use RRL::Test::Ports qw(free_port);

sub redis_port { $_[0]{redis_port} }
sub redis_socket { "$_[0]{dir}/redis/redis.sock" }

# start_redis(password => 'x', args => [...]): the first call picks the port,
# later calls (after stop_redis) reuse it

sub start_redis {
    my ($self, %opts) = @_;

    croak 'redis-server is running already' if $self->{redis_pid};

    $self->{redis_port} //= free_port();
    $self->{redis_password} = $opts{password} if exists $opts{password};
    $self->{redis_args} = $opts{args} if $opts{args};

    my $rdir = "$self->{dir}/redis";
    unless (-d $rdir) {
        mkdir $rdir or croak "mkdir $rdir: $!";
    }
    chmod 0755, $rdir;

    my @cmd = (redis_server_binary(),
        '--port', $self->{redis_port},
        '--bind', '127.0.0.1',
        '--save', '',
        '--appendonly', 'no',
        '--dir', $rdir,
        '--daemonize', 'no',
        '--unixsocket', "$rdir/redis.sock",
        '--unixsocketperm', '777',
        '--logfile', "$rdir/redis.log",
        (defined $self->{redis_password}
            ? ('--requirepass', $self->{redis_password}) : ()),
        @{ $self->{redis_args} });

    my $pid = fork;
    croak "fork: $!" unless defined $pid;

    if ($pid == 0) {
        open STDIN, '<', '/dev/null';
        open STDOUT, '>>', "$rdir/redis.stdout";
        open STDERR, '>&', \*STDOUT;
        { no warnings q(exec); exec @cmd; }
        POSIX::_exit(127);
    }

    $self->{redis_pid} = $pid;

    my $deadline = time + 10;
    while (time < $deadline) {
        if (waitpid($pid, WNOHANG) == $pid) {
            $self->{redis_pid} = undef;
            croak "redis-server exited at start: "
                . read_file("$rdir/redis.log") . read_file("$rdir/redis.stdout");
        }
        my $pong = eval { $self->redis('PING') } // '';
        return $self if $pong eq 'PONG';
        sleep 0.02;
    }

    croak "redis-server did not answer PING on port $self->{redis_port}";
}

sub stop_redis {
    my ($self) = @_;
    my $pid = $self->{redis_pid} or return;

    kill 'TERM', $pid;
    my $deadline = time + 10;
    while (time < $deadline) {
        last if waitpid($pid, WNOHANG) == $pid;
        sleep 0.01;
    }
    if (kill 0, $pid) {
        kill 'KILL', $pid;
        waitpid($pid, 0);
    }

    $self->{redis_pid} = undef;

    # the port must be free for a restart on the same one
    $deadline = time + 5;
    while (time < $deadline) {
        my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
            PeerPort => $self->{redis_port}, Proto => 'tcp');
        last unless $s;
        close $s;
        sleep 0.01;
    }

    return $self;
}

sub redis_running { defined $_[0]{redis_pid} }

# SIGSTOP/SIGCONT: a Redis that hangs without closing its connections
sub signal_redis {
    my ($self, $sig) = @_;
    kill $sig, $self->{redis_pid} or croak "kill $sig redis: $!";
}

sub redis_cli_cmd {
    my ($self, $db) = @_;
    return (redis_cli_binary(), '-h', '127.0.0.1', '-p', $self->{redis_port},
        (defined $self->{redis_password}
            ? ('-a', $self->{redis_password}, '--no-auth-warning') : ()),
        (defined $db ? ('-n', $db) : ()),
        '--raw');
}

# redis(@args): runs redis-cli; the output, trailing newline removed, in
# scalar context; its lines in list context. A nil reply is ''.

sub redis {
    my ($self, @args) = @_;
    return $self->redis_db(undef, @args);
}

sub redis_db {
    my ($self, $db, @args) = @_;
    croak 'no redis port' unless $self->{redis_port};
    return run_command($self->redis_cli_cmd($db), @args);
}

# fw_count($key, $window): the count of the fixed_window state at $key
# ("WINDOW:COUNT"); 0 when there is none or, with $window, when it is of
# another window
sub fw_count {
    my ($self, $key, $window) = @_;
    return fw_count_of(scalar $self->redis('GET', $key), $window);
}

sub fw_count_of {
    my ($value, $window) = @_;
    return 0 unless ($value // '') =~ /^(\d+):(\d+)$/;
    return defined $window && $1 != $window ? 0 : $2;
}

# commandstats: INFO commandstats as {command => calls}
sub commandstats { commandstats_of($_[0]->redis('INFO', 'commandstats')) }

sub commandstats_of {
    my %c;
    for (@_) {
        $c{$1} = $2 if /^cmdstat_(\S+):calls=(\d+)/;
    }
    return \%c;
}

# Redis's clock, the one the script uses, as float seconds
sub redis_time {
    my ($self) = @_;
    my ($s, $us) = $self->redis('TIME');
    croak "bad TIME reply" unless defined $us && $s =~ /^\d+$/;
    return $s + $us / 1e6;
}

# Makes sure at least $min_left seconds remain in the current fixed window
# of $period seconds (windows aligned on the Unix epoch), sleeping into the
# next window if needed. Returns the current window's end.

sub wait_window {
    my ($self, $period, $min_left) = @_;
    $min_left //= 3;
    my $now = $self->redis_time;
    my $left = $period - ($now - int($now / $period) * $period);
    if ($left < $min_left) {
        sleep($left + 0.05);
        $now = $self->redis_time;
    }
    return (int($now / $period) + 1) * $period;
}

1;
